import type { InfraNames } from "../config/names.ts";

/**
 * The account mapping that stores `<chat>.<thread>.<kind>` as `<chat>.<thread>.<kind>.<k>`,
 * k = `{{partition(N,1)}}` (docs/scale-out.md), as nats-server config text. Top level it maps the
 * default account; inside an account block, that account.
 */
export function partitionMappings(
  names: InfraNames | readonly InfraNames[],
  partitions: number,
): string {
  const lines: string[] = [];
  for (const { chatPrefix: chat } of Array.isArray(names) ? names : [names]) {
    // wildcard 1 is the source's first `*`, the thread, however many tokens the prefix has.
    for (const kind of ["message.created", "thread.deleted"]) {
      lines.push(
        `  "${chat}.*.${kind}": "${chat}.{{wildcard(1)}}.${kind}.{{partition(${partitions},1)}}"`,
      );
    }
  }
  return `mappings = {\n${lines.join("\n")}\n}\n`;
}

export interface ClusterNodeConfig {
  /** This node's name in the cluster (`server_name`, which JetStream clustering requires). */
  name: string;
  host: string;
  clientPort: number;
  clusterPort: number;
  /** The cluster ports of every node, this one included (nats-server skips its own route). */
  routes: readonly number[];
  /** Where this node keeps its JetStream files. */
  storeDir: string;
}

/** A JetStream cluster node's config text: `npm run cluster` and the cluster tests run three. */
export function clusterNodeConfig(node: ClusterNodeConfig, mappings: string): string {
  const routes = node.routes.map((p) => `    "nats://${node.host}:${p}"`).join("\n");
  return [
    `server_name: ${node.name}`,
    `listen: "${node.host}:${node.clientPort}"`,
    `jetstream { store_dir: "${node.storeDir}" }`,
    `cluster {`,
    `  name: outline`,
    `  listen: "${node.host}:${node.clusterPort}"`,
    `  routes = [`,
    routes,
    `  ]`,
    `}`,
    mappings,
  ].join("\n");
}
