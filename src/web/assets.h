// The web inbox's page, embedded at build time from src/web/ (no CDN, no build step at run
// time): served as is by InboxApi.
#pragma once

#include <string_view>

namespace cortex {

std::string_view InboxHtml();  // src/web/inbox.html
std::string_view InboxJs();    // src/web/inbox.js
std::string_view InboxCss();   // src/web/inbox.css

}  // namespace cortex
