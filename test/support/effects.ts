import type { Actor } from "xstate";
import type { ThreadMachine } from "../../machines/thread.ts";
import type { Effect } from "../../shared/step.ts";

/** A handler per effect type, as `actor.on` took one per emitted event. */
export type EffectHandlers = {
  [T in Effect["type"]]?: (effect: Extract<Effect, { type: T }>) => void;
};

/**
 * Runs each effect the actor's steps leave in its context, in order, as the worker's host does
 * (hosted-actor.ts): read after each event, once. Effects already in the context are not run.
 */
export function onEffects(actor: Actor<ThreadMachine>, handlers: EffectHandlers): void {
  let ran = actor.getSnapshot().context.effects;
  actor.subscribe((snapshot) => {
    const effects = snapshot.context.effects;
    if (effects === ran) return;
    ran = effects;
    for (const effect of effects) {
      (handlers[effect.type] as ((effect: Effect) => void) | undefined)?.(effect);
    }
  });
}
