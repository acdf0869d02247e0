// Markdown for model and page text, rendered safely: markdown-it with html:false escapes every tag
// (`<script>`, `<img onerror>` come out as text), its link validator refuses javascript:/vbscript:/file:
// and data: links, and images are switched off (a model's image link would make the browser fetch a
// third-party URL). Links open in a new tab without an opener or referrer.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
md.disable(["image"]);
const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  if (token !== undefined) {
    token.attrSet("target", "_blank");
    token.attrSet("rel", "noopener noreferrer nofollow");
  }
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}
