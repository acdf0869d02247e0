// Inline SVG icons (no icon font, nothing fetched). Decorative: the controls carry their own labels.
const kPaths = {
  tool: "M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.6 2.6-2.4-.6-.6-2.4z",
  fork: "M6 3v6a4 4 0 0 0 4 4h4a4 4 0 0 1 4 4v4M6 3a2 2 0 1 0 0 .1M18 21a2 2 0 1 0 0-.1M6 9v12",
  stop: "M6 6h12v12H6z",
  send: "M4 12l16-8-6 16-2-7z",
  queue: "M4 6h16M4 12h16M4 18h10",
  trash: "M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13",
  plus: "M12 5v14M5 12h14",
  warn: "M12 3l10 18H2zM12 10v5M12 18v.5",
  edit: "M4 20h4L19 9l-4-4L4 16zM13 7l4 4",
} as const;

export type IconName = keyof typeof kPaths;

export function Icon({ name }: { name: IconName }) {
  return (
    <svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false">
      <path d={kPaths[name]} fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" />
    </svg>
  );
}
