// browser/dom_nodes.h — from an element of keel's page-script registry to the browser's DOM node, and back
// to the frames: the CDP side of refs (plan §1.6).
//
//   - element_node: the backendNodeId of the element at `index` in keel's world of a frame (0 when the
//     registry has no connected element there). A ref pins this id at first use; later uses must resolve to
//     the same node, so a registry that handed an index to another element can never retarget a click.
//   - frame_owner: the backendNodeId of the <iframe> element that holds a frame, in its parent's document.
//   - content_origin: where a node's content box starts in the main frame's viewport (CSS px).
//
// Runtime thread only. Every call is bounded by `timeout`; failures are the connection's coded errors.
#pragma once

#include <array>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "browser/browser_connection.h"
#include "keel/error.h"

namespace keel::browser {

// Parameters by value (coroutines).
boost::asio::awaitable<Result<int64_t>> element_node(std::shared_ptr<BrowserConnection> connection,
                                                     int64_t tab_id, std::string frame_id, int64_t index,
                                                     std::chrono::milliseconds timeout);

boost::asio::awaitable<Result<int64_t>> frame_owner(std::shared_ptr<BrowserConnection> connection,
                                                    std::string parent_session_id, std::string frame_id,
                                                    std::chrono::milliseconds timeout);

boost::asio::awaitable<Result<std::array<int64_t, 2>>> content_origin(
    std::shared_ptr<BrowserConnection> connection, std::string session_id, int64_t backend_node_id,
    std::chrono::milliseconds timeout);

}  // namespace keel::browser
