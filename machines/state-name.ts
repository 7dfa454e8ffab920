/** A state value as one string: `idle`, or `active.idle` for nested states. */
export function stateName(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return "?";
  return Object.entries(value as Record<string, unknown>)
    .map(([key, inner]) => {
      const rest = stateName(inner);
      return typeof inner === "object" && inner !== null && Object.keys(inner).length === 0
        ? key
        : `${key}.${rest}`;
    })
    .join(",");
}

/** Whether a state value is the state `name` (as stateName writes it), without building names. */
export function isState(value: unknown, name: string): boolean {
  if (typeof value === "string") return value === name;
  if (typeof value !== "object" || value === null) return false;
  let only: string | undefined;
  for (const key in value) {
    if (only !== undefined) return stateName(value) === name;
    only = key;
  }
  const inner = (value as Record<string, unknown>)[only as string];
  if (only === undefined || typeof inner !== "string") return stateName(value) === name;
  return (
    name.length === only.length + 1 + inner.length &&
    name.startsWith(only) &&
    name.charCodeAt(only.length) === 46 &&
    name.endsWith(inner)
  );
}
