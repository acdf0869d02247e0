// Reading keel's node bodies and inputs (docs/protocol.md; src/store/node_body.cc): content is a string or
// an array of blocks {type: text | image | reasoning}.

export interface ContentBlock {
  type?: string;
  text?: string;
  mediaType?: string;
  data?: string;
}

export function blocksOf(content: unknown): ContentBlock[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (Array.isArray(content)) return content.filter((b): b is ContentBlock => typeof b === "object" && b !== null);
  if (typeof content === "object" && content !== null && "content" in content) {
    return blocksOf((content as { content: unknown }).content);
  }
  return [];
}

export function textOf(content: unknown, type = "text"): string {
  return blocksOf(content)
    .filter((b) => b.type === type && typeof b.text === "string")
    .map((b) => b.text)
    .join("\n");
}

export function imagesOf(content: unknown): ContentBlock[] {
  return blocksOf(content).filter((b) => b.type === "image" && typeof b.data === "string");
}

/** A data: URL only for the raster types a page may show; anything else is not shown. */
export function imageUrl(mediaType: string | undefined, base64: string): string | null {
  const allowed = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  if (mediaType === undefined || !allowed.includes(mediaType)) return null;
  if (!/^[A-Za-z0-9+/=\s]*$/.test(base64)) return null;
  return `data:${mediaType};base64,${base64}`;
}
