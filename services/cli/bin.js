#!/usr/bin/env node
// `npx outline <command>`: the compiled CLI (dist/cli.js, rebuilt first when a source changed);
// OUTLINE_FROM_SOURCES=1 runs the TypeScript through tsx instead.
import { launch } from "../build/build.js";

await launch("cli");
