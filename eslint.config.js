// @ts-check
import js from "@eslint/js";
import tseslint from "typescript-eslint";

// shared/ is the pure core: no clock, no network, no filesystem. Time and ids come in as data.
const ioModules = [
  "node:*",
  "fs",
  "path",
  "os",
  "net",
  "http",
  "https",
  "child_process",
  "crypto",
  "worker_threads",
  "@nats-io/*",
  "openai",
  "xstate",
  "@statelyai/*",
];

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
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ioModules,
              message:
                "shared/ is the pure core: do I/O in services/ and pass the result in as data.",
            },
          ],
        },
      ],
      "no-restricted-globals": [
        "error",
        { name: "fetch", message: "shared/ does no network I/O." },
        { name: "process", message: "shared/ reads no environment: settings come in as data." },
        { name: "setTimeout", message: "shared/ has no clock." },
        { name: "setInterval", message: "shared/ has no clock." },
      ],
      "no-restricted-properties": [
        "error",
        { object: "Date", property: "now", message: "shared/ has no clock: pass time in." },
        { object: "Math", property: "random", message: "shared/ makes no ids or randomness." },
        { object: "crypto", property: "randomUUID", message: "shared/ makes no ids." },
      ],
      "no-restricted-syntax": [
        "error",
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "shared/ has no clock: pass time in.",
        },
      ],
    },
  },
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
);
