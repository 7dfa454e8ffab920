// esbuild bundles imported CSS into app.css.
declare module "*.css";
