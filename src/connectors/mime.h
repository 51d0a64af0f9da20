// MIME through GMime: composing the mail Cortex sends. GMime encodes the subject (RFC 2047),
// folds long headers, picks the body's transfer encoding and writes the Date and
// Message-ID, so none of that is hand-written here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/model.h"

namespace cortex {

// The RFC 5322 message (CRLF line ends) delivering message `item` from `from` at `date`:
// From, To, Subject, Date, Message-ID <item.id@cortex>, In-Reply-To and References when it
// answers a message, and the body as text/plain UTF-8. No control character of the subject
// or the addresses reaches a header.
std::string ComposeMail(const OutboxItem& item, const std::string& from, TimePoint date);

// What Cortex reads from one received or sent message.
struct ParsedMail {
  std::string message_id;                               // without <>, or "" if it has none
  std::string in_reply_to;                              // the first id of In-Reply-To, or ""
  std::vector<std::string> references;                  // References, oldest first
  std::string subject;                                  // RFC 2047 words decoded, one line
  std::string from_name, from_address;                  // the first From mailbox
  std::vector<std::pair<std::string, std::string>> to;  // To mailboxes: name, address
  std::optional<TimePoint> date;                        // the Date header, if it parses
  std::string text;  // the body as text: text/plain, else the HTML part made readable
  std::vector<std::string> attachments;  // attachment file names (contents not kept)
};

// Parses an RFC 5322 message with GMime. Never fails on odd input: what cannot be read is
// left empty. InvalidArgument only when nothing looks like a message at all.
Result<ParsedMail> ParseMail(std::string_view raw);

// The readable text of an HTML document (libxml2's HTML parser): scripts and styles
// dropped, blocks on lines of their own, whitespace collapsed.
std::string HtmlToText(std::string_view html);

// A folder name as IMAP writes it (RFC 3501 5.1.3, modified UTF-7): printable ASCII as
// itself ("&" as "&-"), anything else as "&" + base64 of its UTF-16 (',' for '/') + "-".
// "Entwürfe" is "Entw&APw-rfe". REQUIRES: `utf8` is valid UTF-8 without control characters.
std::string ImapMailboxName(std::string_view utf8);

// Initialises GMime once per process (thread-safe).
void EnsureGMime();

}  // namespace cortex
