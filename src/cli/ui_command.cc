// keel ui: the web interface on a free loopback port — keel serve --listen 127.0.0.1:0 that also opens the
// page when a display exists (docs/cli.md, docs/web.md).
#include "cli/commands.h"

namespace keel::cli {

int ui_command(const CommandContext& context, const UiOptions& options) {
  ServeOptions serve;
  serve.listen = "127.0.0.1:0";
  serve.token_file = options.token_file;
  serve.port_file = options.port_file;
  serve.ui_dir = options.ui_dir;
  serve.model = options.model;
  serve.workspace = options.workspace;
  serve.open_web_page = !options.no_open;
  return serve_command(context, serve);
}

}  // namespace keel::cli
