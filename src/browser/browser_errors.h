// browser/browser_errors.h — error codes of the browser layer (stable, part of the protocol: they reach
// clients as tool results' error codes and are listed in docs/protocol.md, which keel_error_registry_test
// checks). One block per part of the layer.
#pragma once

#include "keel/error_codes.h"

namespace keel::codes {

// CDP client, transports and the browser process (browser/cdp/, browser/browser_process.h).
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

// Tabs, frames and page-script calls (browser/browser_connection.h, browser/call_script.h).
inline constexpr char kBrowserCrashed[] =
    "browser.crashed";  // the browser exited or was killed during the call (or before it)
inline constexpr char kBrowserTabCrashed[] = "browser.tab_crashed";  // the tab's renderer crashed
inline constexpr char kBrowserNavigationFailed[] =
    "browser.navigation_failed";  // the browser could not load the page (net::ERR_… in the text)

// Refs and page scripts (browser/ref_table.h, browser/snapshot.h).
inline constexpr char kBrowserUnknownRef[] =
    "browser.unknown_ref";  // not a ref keel issued (or issued before keel restarted)
inline constexpr char kBrowserWrongTab[] = "browser.wrong_tab";  // a ref of another tab than the current one
inline constexpr char kBrowserStaleRef[] =
    "browser.stale_ref";  // the element a ref named is gone or changed (navigation, re-render, closed tab)
inline constexpr char kBrowserBadScriptResult[] =
    "browser.bad_script_result";  // a page script's result is not what keel expects (shape, reused index)

// Navigation guard, L2 input and the restart state file (browser/origin_guard.h, browser/input.h,
// browser/browser_state_file.h).
inline constexpr char kBrowserNavigationRefused[] =
    "browser.navigation_refused";  // a URL keel does not open (scheme) or an origin the policy denies
inline constexpr char kBrowserUnknownKey[] =
    "browser.unknown_key";  // a key or key chord the key table does not know ("Enterr", "Hyper+A")
inline constexpr char kBrowserStateFileIo[] =
    "browser.state_file_io";  // <data_dir>/browser/state.json cannot be read or written
inline constexpr char kBrowserStateFileUnsafe[] =
    "browser.state_file_unsafe";  // the state file is a symlink, another user's, or open to group/others
inline constexpr char kBrowserStateFileDamaged[] =
    "browser.state_file_damaged";  // the state file is not what keel writes (ignored: keel starts without it)

// Browser tools (browser/browser_runtime.h, browser/tools/).
inline constexpr char kBrowserModalOpen[] =
    "browser.modal_open";  // a dialog or file chooser is open on the tab; the error names the tool that
                           // clears it
inline constexpr char kBrowserNoModal[] = "browser.no_modal";  // no dialog or file chooser is open on the tab
                                                               // (browser_handle_dialog, browser_upload_file)
inline constexpr char kBrowserElementCovered[] =
    "browser.element_covered";  // another element is on top of the ref's element at the point of the action
                                // (named in the text)
inline constexpr char kBrowserNotActionable[] =
    "browser.not_actionable";  // the element cannot take this action (hidden, disabled, not editable, no such
                               // option)
inline constexpr char kBrowserTargetChanged[] =
    "browser.target_changed";  // the page is no longer at the origin the call was decided (and maybe
                               // approved) for
inline constexpr char kBrowserNoSuchTab[] =
    "browser.no_such_tab";  // the thread has no tab with this id (or no tab at all yet)
inline constexpr char kBrowserTakenOver[] =
    "browser.taken_over";  // a person has taken the browser over; the agent touches no page until it is
                           // handed back
inline constexpr char kBrowserUploadOutsideWorkspace[] =
    "browser.upload_outside_workspace";  // a file to upload is not inside the workspace folder

}  // namespace keel::codes
