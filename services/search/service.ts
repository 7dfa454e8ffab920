import type { NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { createReader } from "../nats/reader.ts";
import { serveSearchApi, type SearchApi } from "./api.ts";
import { startIndexer, type IndexerOptions, type SearchIndexer } from "./indexer.ts";
import { createSearch } from "./search.ts";

/** The search service as main.ts runs it: the indexer, and the operation served over NATS. */
export interface SearchService {
  indexer: SearchIndexer;
  api: SearchApi;
  /** Stops answering, then stops the indexer (the file is closed). */
  stop(): Promise<void>;
}

export async function startSearchService(
  options: {
    nc: NatsConnection;
    names: InfraNames;
    path: string;
    log: (line: string) => void;
  } & Pick<IndexerOptions, "cacheMiB" | "idleCheckMs" | "fallback">,
): Promise<SearchService> {
  const { nc, names, log } = options;
  const indexer = await startIndexer(options);
  const search = createSearch(createReader(nc, names), indexer);
  const api = serveSearchApi(nc, names.apiPrefix, search, indexer, log);
  return {
    indexer,
    api,
    async stop() {
      await api.drain();
      await indexer.stop();
    },
  };
}
