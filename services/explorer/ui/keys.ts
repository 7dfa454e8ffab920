// Keyboard navigation: one map of keys per page, ignored while typing in a field.
import { useEffect } from "preact/hooks";

export type KeyMap = Record<string, (event: KeyboardEvent) => unknown>;

function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el) return false;
  return (
    el.tagName === "INPUT" ||
    el.tagName === "TEXTAREA" ||
    el.tagName === "SELECT" ||
    el.isContentEditable
  );
}

export function useKeys(keys: KeyMap): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      if (typing(event.target)) return;
      const handler = keys[event.key];
      if (!handler) return;
      // A focused button or link keeps Enter and Space for itself.
      const tag = (event.target as HTMLElement | null)?.tagName;
      if ((event.key === "Enter" || event.key === " ") && (tag === "BUTTON" || tag === "A")) return;
      event.preventDefault();
      handler(event);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [keys]);
}
