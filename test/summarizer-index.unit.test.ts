import { describe, expect, it } from "vitest";
import { SettingsError } from "../shared/errors.ts";
import { parseSettings } from "../shared/settings.ts";
import {
  ExtractiveSummarizer,
  OpenAISummarizer,
  createSummarizer,
} from "../services/summarizer/index.ts";

function settingError(run: () => unknown): SettingsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SettingsError);
    return error as SettingsError;
  }
  throw new Error("expected a SettingsError");
}

describe("createSummarizer", () => {
  it("is the offline extractive summarizer by default", () => {
    const summarizer = createSummarizer(parseSettings({}), {});
    expect(summarizer).toBeInstanceOf(ExtractiveSummarizer);
    expect(summarizer.name).toBe("extractive");
    expect(summarizer.usage()).toEqual({
      calls: 0,
      failures: 0,
      inputTokens: 0,
      cachedTokens: 0,
      outputTokens: 0,
      cpuMs: 0,
    });
  });

  it("builds openai/<model> from the key, or from a base URL alone", () => {
    const hosted = createSummarizer(parseSettings({ HISTORY_SUMMARIZER: "openai/gpt-4o-mini" }), {
      OPENAI_API_KEY: "sk-test",
    });
    expect(hosted).toBeInstanceOf(OpenAISummarizer);
    expect(hosted.name).toBe("openai/gpt-4o-mini");
    const local = createSummarizer(
      { summarizer: "openai/llama3.1:8b" },
      { OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" },
    );
    expect(local.name).toBe("openai/llama3.1:8b");
  });

  it("refuses at start what cannot work, naming the variable to fix", () => {
    const noKey = settingError(() => createSummarizer({ summarizer: "openai/gpt-4o-mini" }, {}));
    expect(noKey.setting).toBe("OPENAI_API_KEY");
    expect(noKey.message).toContain("HISTORY_SUMMARIZER=extractive");

    const badUrl = settingError(() =>
      createSummarizer({ summarizer: "openai/m" }, { OPENAI_BASE_URL: "localhost:11434" }),
    );
    expect(badUrl.setting).toBe("OPENAI_BASE_URL");

    const badTimeout = settingError(() =>
      createSummarizer(
        { summarizer: "openai/m" },
        { OPENAI_API_KEY: "k", OPENAI_TIMEOUT_MS: "5s" },
      ),
    );
    expect(badTimeout.setting).toBe("OPENAI_TIMEOUT_MS");

    const unknown = settingError(() => createSummarizer({ summarizer: "anthropic/claude" }, {}));
    expect(unknown.setting).toBe("HISTORY_SUMMARIZER");
  });
});
