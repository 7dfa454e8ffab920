import type { Linter } from "eslint";

/** ESLint rules that keep shared/ free of I/O, clocks and randomness. */
export declare const pureCoreRules: Linter.RulesRecord;
