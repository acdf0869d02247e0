// browser/browser_errors.h — error codes of the browser layer (stable; merged into keel/error_codes.h at the
// end of issue 17). Each work package appends its own block.
#pragma once

#include "keel/error_codes.h"

namespace keel::codes {

// CDP client, transports and the browser process (issue 17, WP B).
inline constexpr char kBrowserLaunchFailed[] = "browser.launch_failed";  // Chromium could not be started
inline constexpr char kBrowserDisconnected[] =
    "browser.disconnected";  // the CDP connection closed (the browser exited or its pipe broke)
inline constexpr char kBrowserCdpTimeout[] = "browser.cdp_timeout";  // a CDP command got no reply in time
inline constexpr char kBrowserCdpError[] =
    "browser.cdp_error";  // the browser answered a command with an error
inline constexpr char kBrowserAttachFailed[] =
    "browser.attach_failed";  // the browser's DevTools endpoint could not be reached (or is not loopback)
inline constexpr char kBrowserTargetClosed[] =
    "browser.target_closed";  // the command's session ended (its tab or frame went away)

}  // namespace keel::codes
