import { describe, expect, it } from "vitest";
import { PermissionViolationError } from "@nats-io/transport-node";
import { mentionsRefusal, PermissionDenied } from "../services/cli/permissions.ts";
import { actionOn } from "../services/nats/permission-violations.ts";

const refusal = (subject: string, operation = "Publish") =>
  PermissionViolationError.parse(`Permissions Violation for ${operation} to "${subject}"`) ??
  (() => {
    throw new Error("not parsed");
  })();

describe("what a refused subject means", () => {
  it("names the stream a JetStream API subject reads or changes", () => {
    expect(actionOn(refusal("$JS.API.STREAM.INFO.DEAD"))).toBe("read stream DEAD");
    expect(actionOn(refusal("$JS.API.DIRECT.GET.CHAT"))).toBe("read stream CHAT");
    expect(actionOn(refusal("$JS.API.DIRECT.GET.KV_outline.$KV.outline.t1"))).toBe(
      "read stream KV_outline",
    );
    expect(actionOn(refusal("$JS.API.CONSUMER.CREATE.DEAD.abc.outline.dead.>"))).toBe(
      "read stream DEAD",
    );
    expect(actionOn(refusal("$JS.API.CONSUMER.MSG.NEXT.HISTORY.c1"))).toBe("read stream HISTORY");
    expect(actionOn(refusal("$JS.API.STREAM.PURGE.CHAT"))).toBe("change stream CHAT");
  });

  it("names any other subject as a publish or a subscription", () => {
    expect(actionOn(refusal("chat.t1.message.created"))).toBe("publish to chat.t1.message.created");
    expect(actionOn(refusal("outline.api.prompt", "Subscription"))).toBe(
      "subscribe to outline.api.prompt",
    );
  });

  it("says which user, what, and the server's words", () => {
    const err = new PermissionDenied(refusal("$JS.API.STREAM.INFO.DEAD"), {
      kind: "user",
      user: "platform",
      password: "x",
    });
    expect(err.message).toBe(
      `NATS user 'platform' may not read stream DEAD (Permissions Violation for Publish to "$JS.API.STREAM.INFO.DEAD")`,
    );
    expect(mentionsRefusal(new Error("reading failed", { cause: err }))).toBe(true);
    expect(mentionsRefusal(new Error("JetStream did not answer"))).toBe(false);
  });
});
