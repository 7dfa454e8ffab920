// `npm run cluster`'s instances: each its own port and search index file, apart from the folder's.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { instanceEnv } from "../services/cluster/instance-env.ts";
import { parseSearchConfig } from "../services/search/config.ts";

const dir = join("/srv", ".data", "cluster");
const at = (port: number) => ({ natsUrl: "nats://a:1,nats://b:2", port, partitions: 32, dir });

describe("npm run cluster's instance environment", () => {
  it("names a search index per instance in the cluster's folder, never the folder's own", () => {
    const paths = [8080, 8081].map(
      (port) => parseSearchConfig(instanceEnv({ HISTORY_SEARCH: "on" }, {}, at(port)), "/srv").path,
    );
    expect(paths).toEqual([join(dir, "search-8080.db"), join(dir, "search-8081.db")]);
    expect(paths).not.toContain(parseSearchConfig({}, "/srv").path);
  });

  it("keeps a file the settings name, and the servers, port and partitions it is given", () => {
    const env = instanceEnv({ PATH: "/bin" }, { OUTLINE_SEARCH_DB: "/x/i.db" }, at(9000));
    expect(env).toMatchObject({
      PATH: "/bin",
      NATS_URL: "nats://a:1,nats://b:2",
      PORT: "9000",
      OUTLINE_PARTITIONS: "32",
      OUTLINE_REPLICAS: "3",
      OUTLINE_SEARCH_DB: "/x/i.db",
    });
  });
});
