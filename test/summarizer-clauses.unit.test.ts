import { describe, expect, it } from "vitest";
import { lineIdeas, pleasantry } from "../services/summarizer/extract/segment.ts";
import { findEntities } from "../services/summarizer/extract/entities.ts";
import { cueOf, elongated, termsOf, voiceOf } from "../services/summarizer/extract/units.ts";
import { extractMerge } from "../services/summarizer/extractive.ts";

const texts = (line: string) => lineIdeas(line).ideas.map((idea) => idea.sentences.join(" "));

describe("a line read back for a merge", () => {
  it("offers a long sentence's clauses apart, so a merge can keep the one with the fact", () => {
    expect(texts("Emi: I study at NYU in New York, a bit away from my family in Ohio.")).toEqual([
      "I study at NYU in New York",
      "a bit away from my family in Ohio.",
    ]);
    // A clause left with nothing once its filler is off is left out.
    expect(texts("Emi: I study at NYU in New York, haha so cool lol")).toEqual([
      "I study at NYU in New York",
    ]);
  });

  it("keeps a clause too short to read on its own with its neighbour", () => {
    expect(texts("Emi: Yeah I do, I have cousins who live over there!")).toEqual([
      "I do, I have cousins who live over there!",
    ]);
    expect(texts("Bo: We went to Porto, Lisbon, and Faro last May.")).toEqual([
      "We went to Porto, Lisbon, and Faro last May.",
    ]);
  });

  it("splits a clause that opens with 'and' from the clause before it", () => {
    expect(texts("Emi: It's been a passion of mine, and hitting the slopes is a thrill.")).toEqual([
      "It's been a passion of mine",
      "hitting the slopes is a thrill.",
    ]);
  });

  it("leaves out bare greetings and acknowledgements, and keeps what carries a fact", () => {
    expect(
      texts("Emi: Hey Emily! I'm from Los Angeles. / elise: That sounds great! Yes I have!"),
    ).toEqual(["I'm from Los Angeles.", ""]);
    for (const bare of [
      "Hey Emily!",
      "Wow Kate.",
      "That sounds great!",
      "Thank you so much!",
      "Haha",
    ])
      expect(pleasantry(bare)).toBe(true);
    for (const fact of [
      "Miami is the best!",
      "I'm 25.",
      "We had sushi.",
      "Hey, the flight is at 9.",
    ])
      expect(pleasantry(fact)).toBe(false);
  });
});

describe("a unit's cue", () => {
  it("counts a question's request, not the preference or decision it asks about", () => {
    expect(cueOf("Do you have any favorite spots you like to explore?")).toBe(0);
    expect(cueOf("Have you decided on Porto?")).toBe(0);
    expect(cueOf("Can you book the flight to Porto?")).toBe(1.5);
    expect(cueOf("My favorite spot is La Jolla Cove.")).toBe(1.5);
  });

  it("counts what the speaker did and when, not a time alone", () => {
    expect(cueOf("For my mom's birthday last Friday we made macarons.")).toBe(3);
    expect(cueOf("Today I had a very interesting economics class.")).toBe(2);
    expect(cueOf("The standup ran long this morning.")).toBe(0);
    expect(cueOf("Maybe we look at it again on Friday.")).toBe(0);
    expect(cueOf("What did you do today?")).toBe(0);
    expect(cueOf("We fly to Porto tomorrow.")).toBe(2);
    expect(cueOf("I started pottery 3 years ago.")).toBe(2);
    expect(cueOf("I recently started pottery.")).toBe(2);
    expect(cueOf("The museum reopens next week.")).toBe(0);
  });

  it("counts the people in the speaker's life", () => {
    expect(cueOf("My sister teaches piano in Ghent.")).toBe(1);
    expect(cueOf("Our dog Max sleeps on the sofa.")).toBe(1);
    expect(cueOf("A sister of a colleague teaches piano.")).toBe(0);
    expect(cueOf("How is your mom?")).toBe(0);
  });
});

describe("a unit's voice", () => {
  it("weighs what speakers say of themselves over what they say of the listener", () => {
    expect(voiceOf("My sister lives in Porto.")).toBeGreaterThan(voiceOf("I went to Porto."));
    expect(voiceOf("We’re moving to Porto.")).toBe(voiceOf("We're moving to Porto."));
    expect(voiceOf("I went to Porto.")).toBeGreaterThan(voiceOf("The train to Porto was late."));
    expect(voiceOf("The train to Porto was late.")).toBe(1);
    expect(voiceOf("You would love Porto.")).toBeLessThan(1);
    // A reaction ("That sounds…") answers what was said before it.
    expect(voiceOf("That sounds like a great trip to Porto.")).toBeLessThan(1);
    expect(voiceOf("That trip to Porto was my first.")).toBeLessThan(
      voiceOf("My first trip was to Porto."),
    );
  });

  it("weighs what may be, could be or should be below what was", () => {
    expect(voiceOf("I could take a ceramics class in Ghent.")).toBeLessThan(
      voiceOf("I took a ceramics class in Ghent."),
    );
    expect(voiceOf("We might move to Porto.")).toBeLessThan(voiceOf("We moved to Porto."));
    // The month is no modal.
    expect(voiceOf("We moved to Porto in May.")).toBe(voiceOf("We moved to Porto."));
    // Nor is advice a fact: what the listener should do.
    const fact = voiceOf("I visited the castle in Porto.");
    for (const advice of [
      "I recommend you visit the castle in Porto.",
      "I think you need to visit the castle in Porto.",
      "Make sure to visit the castle in Porto, I say.",
      "Well, don’t forget the castle in Porto, I say.",
      "Check out the castle in Porto, I say.",
    ])
      expect(voiceOf(advice)).toBeLessThan(fact);
    // What the speaker makes sure of is no advice.
    expect(voiceOf("I always make sure to visit the castle in Porto.")).toBe(fact);
  });

  it("makes a merge with room for one keep the speaker's own fact", () => {
    for (const left of [
      "Ana: You would love the hikes around Bergen. / Bo: My sister teaches piano in Ghent.",
      "Ana: My sister teaches piano in Ghent. / Bo: You would love the hikes around Bergen.",
    ]) {
      const merged = extractMerge(
        { id: 0, n: 4, text: left },
        { id: 4, n: 4, text: "Cy: Tickets are sold out." },
        90,
      );
      expect(merged).toContain("My sister teaches piano in Ghent.");
      expect(merged).not.toContain("Bergen");
    }
  });
});

describe("a curly apostrophe", () => {
  it("leaves an everyday contraction everyday, and no name", () => {
    const straight = termsOf("so then I'm off and I've told Porto.").terms;
    expect(termsOf("so then I’m off and I’ve told Porto.").terms).toEqual(straight);
    expect(straight).toEqual(["porto"]);
    expect(findEntities("and then I’m in Porto").map((e) => e.text)).toEqual(["Porto"]);
  });

  it("reads a word typed with a letter held as no rare word", () => {
    expect(termsOf("I love himmm soooo much, he lives in Porto").terms).toEqual(["porto", "lives"]);
    expect(elongated("sooo")).toBe(true);
    expect(elongated("win2000")).toBe(false);
    expect(elongated("coffee")).toBe(false);
    // A curly apostrophe reads the text another way: the same words.
    expect(termsOf("I’m sooo glad he lives in Porto").terms).toEqual(["porto", "lives"]);
  });

  it("leaves a contraction typed without one everyday too", () => {
    expect(termsOf("dont ask, thats why im gonna be in Porto").terms).toEqual(["porto"]);
  });
});

describe("a name's ends", () => {
  const names = (text: string) =>
    findEntities(text)
      .filter((e) => e.kind === "name")
      .map((e) => e.text);

  it("takes no sentence's opening word and its I for a name", () => {
    expect(names("Additionally I would love to work on my run time")).toEqual([]);
    expect(names("We met Ana. Personally I liked her")).toEqual(["Ana"]);
    expect(names("Honestly Im tired, so Ive stayed in")).toEqual([]);
  });

  it("keeps a name a grammatical word stands beside", () => {
    expect(names("I saw Dua Lipa I think")).toEqual(["Dua Lipa"]);
    expect(names("The Beatles played")).toEqual(["Beatles"]);
    expect(names("yes that Im going to with Kevin")).toEqual(["Kevin"]);
  });

  it("weighs such an opening as no term worth a name's weight", () => {
    const { terms } = termsOf("Although I enjoy tanning");
    expect(terms).not.toContain("although i");
    expect(terms).toContain("tanning");
  });
});
