import { configDefaults, defineConfig } from "vitest/config";

// Three tiers: unit (pure, fast), int (a real nats-server), e2e (the services as processes).
// One nats-server per run, started by the global setup on a free port with a temporary store.
// The heaviest e2e file, many instances on a 3-node cluster (minutes on 2 cores), is a project
// of its own: `--project cluster` runs it alone, `--project e2e` leaves it out.
const HEAVY = ["test/cluster/cluster.e2e.test.ts"];
export default defineConfig({
  test: {
    globalSetup: ["test/support/nats-global-setup.ts"],
    // CI asks for a JSON report too, to print a plain "N passed, N failed" line.
    reporters: process.env.VITEST_JSON ? ["default", "json"] : ["default"],
    outputFile: process.env.VITEST_JSON ? { json: process.env.VITEST_JSON } : {},
    pool: "forks",
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/**/*.unit.test.ts"], testTimeout: 60_000 },
      },
      {
        extends: true,
        test: { name: "int", include: ["test/**/*.int.test.ts"], testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/**/*.e2e.test.ts"],
          exclude: [...configDefaults.exclude, ...HEAVY],
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: "cluster",
          include: HEAVY,
          testTimeout: 900_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});
