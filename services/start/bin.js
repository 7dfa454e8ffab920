#!/usr/bin/env node
// `npm start`: the compiled supervisor (dist/start.js, rebuilt first when a source changed),
// which runs the compiled services; OUTLINE_FROM_SOURCES=1 runs the TypeScript through tsx. No
// tsx process sits between npm and us any more: it passed one Ctrl-C on as two.
import { launch } from "../build/build.js";

await launch("start");
