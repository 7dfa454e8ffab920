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
