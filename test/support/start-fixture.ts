// `npm start` with stand-in services, for the lifeline tests: the same signal handling, orphan
// watch and runStart as services/start/main.ts, in a folder of the test's (argv[2]).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { runStart } from "../../services/start/run.ts";
import { operatorSignals, whenOrphaned } from "../../services/start/signals.ts";

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: start-fixture.ts <dir>");
const lifeline = pathToFileURL(join(import.meta.dirname, "../../services/util/lifeline.ts")).href;
// A service that drains on SIGTERM and on its lifeline, and says which it was.
const standIn = (name: string) => `
import { writeFileSync } from "node:fs";
import { onSupervisorGone } from ${JSON.stringify(lifeline)};
const stop = (why) => { writeFileSync(${JSON.stringify(join(dir, `${name}.stopped`))}, why); process.exit(0); };
process.on("SIGTERM", () => stop("SIGTERM"));
onSupervisorGone(stop);
console.log("up");
setInterval(() => {}, 1000);
`;
const services = ["worker", "api"].map((name) => {
  const entry = join(dir, `${name}.mjs`);
  writeFileSync(entry, standIn(name));
  return { name, entry };
});
const signals = operatorSignals();
const code = await runStart(
  { services, env: { ...process.env, NATS_URL: "" }, cwd: dir },
  { stop: Promise.race([signals.stop, whenOrphaned(100)]), force: signals.force },
);
console.log(`exit ${code}`);
process.exit(code);
