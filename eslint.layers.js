// @ts-check
// The code's layers, lowest first (docs/architecture.md, "Layers", says what each holds). A
// folder imports only from itself and from folders in lower layers: never up, never sideways, so
// no cycle can form between folders. test/ is in no layer: a test may reach any of them.
import { pureCoreRules } from "./eslint.pure-core.js";

/** @type {readonly (readonly string[])[]} */
export const LAYERS = [
  ["shared"],
  ["machines"],
  ["services/util", "services/build", "services/config"],
  ["services/api"],
  ["services/nats"],
  [
    "services/summarizer",
    "services/cluster",
    "services/search",
    "services/explorer",
    "services/client",
  ],
  ["services/thread-worker", "services/prompt-builder", "services/start"],
  ["services/cli"],
  ["services/chat", "services/demo"],
  ["bench"],
];

/** @param {string} s */
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * One pattern per folder `folder` must not import: those in its own layer and every layer above.
 * A specifier climbs with `../` and may name the folder from the top (`../../services/cli/`) or
 * from its parent (`../cli/`); this assumes no folder has a subfolder named like one of these.
 * @param {string} folder
 */
export function layerPatterns(folder) {
  const own = LAYERS.findIndex((layer) => layer.includes(folder));
  if (own < 0) throw new Error(`eslint.layers.js: ${folder} is in no layer`);
  return LAYERS.slice(own)
    .flat()
    .filter((other) => other !== folder)
    .map((other) => {
      const [top, name] = other.split("/");
      const target = name === undefined ? escape(top ?? other) : `(${top}/)?${escape(name)}`;
      const why = LAYERS[own]?.includes(other)
        ? `${folder}/ and ${other}/ share a layer`
        : `${folder}/ is below ${other}/`;
      return {
        regex: `^(\\./)?(\\.\\./)+${target}(/|$)`,
        message: `${why}: move what both need down a layer (docs/architecture.md, Layers).`,
      };
    });
}

/**
 * One flat config per folder, holding `no-restricted-imports` (static imports and re-exports) and
 * a `no-restricted-syntax` twin for `import()`. A later config's options for a rule replace an
 * earlier one's, so shared/'s keep the pure core's restrictions (eslint.pure-core.js) as well.
 * @returns {import("eslint").Linter.Config[]}
 */
export function layerConfigs() {
  return LAYERS.flat().map((folder) => {
    const patterns = layerPatterns(folder);
    const pure = folder === "shared";
    const pureImports = /** @type {[string, { patterns: object[] }]} */ (
      pureCoreRules["no-restricted-imports"]
    );
    const pureSyntax = /** @type {[string, ...object[]]} */ (pureCoreRules["no-restricted-syntax"]);
    return {
      files: [`${folder}/**/*.{ts,tsx,js}`],
      rules: {
        "no-restricted-imports": [
          "error",
          { patterns: [...(pure ? pureImports[1].patterns : []), ...patterns] },
        ],
        "no-restricted-syntax": [
          "error",
          ...(pure ? pureSyntax.slice(1) : []),
          ...patterns.map(({ regex, message }) => ({
            selector: `ImportExpression[source.value=/${regex.replaceAll("/", "\\x2F")}/]`,
            message,
          })),
        ],
      },
    };
  });
}
