// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

import { layerConfigs } from "./eslint.layers.js";
import { pureCoreRules } from "./eslint.pure-core.js";

export default tseslint.config(
  { ignores: ["node_modules/**", ".data/**", "dist/**", "coverage/**", "bench/results.json"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ["*.js", "services/cli/bin.js"] } },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
    },
  },
  {
    files: ["shared/**/*.ts"],
    rules: pureCoreRules,
  },
  // After the pure core's: shared/'s layer config repeats its import and syntax restrictions.
  ...layerConfigs(),
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The plain-JavaScript launchers (bins, build, nats-server's lifeline) run on Node.
    files: ["services/**/*.js"],
    languageOptions: {
      globals: {
        process: "readonly",
        setTimeout: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
      },
    },
  },
);
