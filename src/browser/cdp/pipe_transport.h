// browser/cdp/pipe_transport.h — the CdpTransport of a Chromium started with --remote-debugging-pipe: JSON
// messages, each followed by '\0', written to the browser's fd 3 and read from its fd 4.
//
// Reads in 1 MiB chunks through NulFramer (linear in the bytes, whole messages only; one over
// max_message_bytes is dropped and counted, see nul_framer.h). Writes are queued: one async_write at a time,
// send() never blocks. End of stream or an I/O error calls on_closed once with browser.disconnected.
// Writing to a browser that has exited raises SIGPIPE: the process must ignore it (keel's CLI does,
// cli/signals.h), and then it is an I/O error like any other.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <memory>

#include "browser/cdp/cdp_transport.h"

namespace keel::browser {

// Takes ownership of both descriptors (closed when the transport closes or is destroyed). `ex` must be a
// strand or a single-threaded io_context; every member and callback runs there.
std::unique_ptr<CdpTransport> make_pipe_transport(boost::asio::any_io_executor ex, int to_browser_fd,
                                                  int from_browser_fd, size_t max_message_bytes);

}  // namespace keel::browser
