import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectNats, NatsConnectError } from "../services/nats/connect.ts";

// A port that takes connections and drops them at once, counting them: a server that is not
// (or no longer) a nats-server, without waiting on any clock.
let server: Server;
let url: string;
let attempts = 0;

beforeAll(async () => {
  server = createServer((socket: Socket) => {
    attempts += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  url = `nats://127.0.0.1:${address.port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function failure(from: string | undefined, startupTimeoutMs: number): Promise<Error> {
  try {
    await connectNats({ url, name: "nobody", startupTimeoutMs, ...(from ? { from } : {}) });
  } catch (err) {
    return err as Error;
  }
  throw new Error("connected");
}

describe("connectNats names where its URL came from", () => {
  it("a .data/nats.url a killed 'npm start' left: that file, one attempt, start it again", async () => {
    const file = "/srv/project/.data/nats.url";
    attempts = 0;
    // However long the caller would wait: the file's server is gone, trying again cannot help.
    const err = await failure(file, 5_000);
    expect(err).toBeInstanceOf(NatsConnectError);
    expect(attempts).toBe(1);
    expect(err.message).toContain(`${url} (from ${file}, written by an 'npm start')`);
    expect(err.message).toContain(
      "the 'npm start' that wrote it is not running (killed?): start it again ('npm start' in /srv/project), or set NATS_URL",
    );
    expect(err.message).not.toContain("(NATS_URL)");
    expect(err.message).not.toContain("unset it");
  });

  it("a .data/cluster/nats.url: written by 'npm run cluster', start that again", async () => {
    const file = "/srv/project/.data/cluster/nats.url";
    const err = await failure(file, 5_000);
    expect(err.message).toContain(`${url} (from ${file}, written by 'npm run cluster')`);
    expect(err.message).toContain(
      "the 'npm run cluster' that wrote it is not running (killed?): start it again ('npm run cluster' in /srv/project)",
    );
  });

  it("the default: says NATS_URL is unset and how to get a server", async () => {
    const err = await failure("default", 0);
    expect(err.message).toContain(`${url} (the default: NATS_URL is unset`);
    expect(err.message).toContain("run 'npm start' in this folder");
    expect(err.message).not.toContain("(NATS_URL)");
  });

  it("NATS_URL: names it, and how to fix or unset it", async () => {
    for (const from of ["setting", undefined]) {
      const err = await failure(from, 0);
      expect(err.message).toContain(`${url} (NATS_URL)`);
      expect(err.message).toContain("fix NATS_URL, or unset it and use 'npm start'");
    }
  });
});
