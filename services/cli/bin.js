#!/usr/bin/env node
// `npx outline <command>`: registers tsx so the TypeScript sources run as they are (no build
// step), then hands over to the CLI.
import { register } from "tsx/esm/api";

register();
await import("./main.ts");
