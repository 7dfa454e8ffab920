// @ts-check
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

/** @type {import("eslint").Linter.RulesRecord} */
export const pureCoreRules = {
  "no-restricted-imports": [
    "error",
    {
      patterns: [
        {
          group: ioModules,
          message: "shared/ is the pure core: do I/O in services/ and pass the result in as data.",
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
};
