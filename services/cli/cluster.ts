import { parse } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";
import { failoverMsOf } from "../cluster/failover.ts";
import { clusterTable, clusterView, type ClusterAnswer } from "../cluster/view.ts";

const USAGE = `usage: outline cluster [--json]

Prints who owns what: each instance's partitions, threads in memory and lag (docs/scale-out.md),
read from the cluster bucket, as GET /cluster answers.

  --json   the answer as GET /cluster gives it`;

export const cluster: Command = {
  name: "cluster",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(argv, { json: { type: "boolean" } }, 0);
    if (args.help) return out.help(USAGE);
    return withSession(async ({ nc, config, orAsk, asked }) => {
      const view = clusterView(nc, config.names, failoverMsOf(config.values), { strict: true });
      // A user that may not read the bucket (the platform user) asks a prompt-builder instead.
      const answer: ClusterAnswer = await orAsk(view, "cluster", (client) => client.cluster());
      // Which server answered: another one on the default port would answer "single mode" too.
      if (args.values.json === true) {
        process.stderr.write(`outline cluster: asked ${asked}\n`);
        out.line(JSON.stringify(answer, null, 2));
      } else {
        out.line(`asked ${asked}`);
        for (const line of clusterTable(answer)) out.line(line);
      }
      return 0;
    });
  },
};
