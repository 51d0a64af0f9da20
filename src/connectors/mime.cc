#include "connectors/mime.h"

#include <gmime/gmime.h>
#include <libxml/HTMLparser.h>

#include <algorithm>
#include <mutex>

#include "core/text.h"

namespace cortex {

void EnsureGMime() {
  static std::once_flag once;
  std::call_once(once, [] { g_mime_init(); });
}

namespace {

// The owner of one GObject reference.
template <typename T>
struct GRef {
  T* p;
  explicit GRef(T* ptr) : p(ptr) {}
  ~GRef() {
    if (p != nullptr) g_object_unref(p);
  }
  GRef(const GRef&) = delete;
  GRef& operator=(const GRef&) = delete;
};

std::string Bracketed(const std::string& ids) {
  std::string out;
  size_t pos = 0;
  while (pos < ids.size()) {
    size_t end = ids.find(' ', pos);
    if (end == std::string::npos) end = ids.size();
    if (end > pos) {
      if (!out.empty()) out += ' ';
      out += '<' + ids.substr(pos, end - pos) + '>';
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace

namespace {

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

std::vector<std::string> ReferenceIds(const char* header) {
  std::vector<std::string> out;
  if (header == nullptr) return out;
  GMimeReferences* refs = g_mime_references_parse(nullptr, header);
  if (refs == nullptr) return out;
  for (int i = 0; i < g_mime_references_length(refs); ++i) {
    out.push_back(Str(g_mime_references_get_message_id(refs, i)));
  }
  g_mime_references_free(refs);
  return out;
}

// The first mailbox of `list` (groups are looked into) as {name, address}.
void Mailboxes(InternetAddressList* list, std::vector<std::pair<std::string, std::string>>* out) {
  if (list == nullptr) return;
  for (int i = 0; i < internet_address_list_length(list); ++i) {
    InternetAddress* a = internet_address_list_get_address(list, i);
    if (INTERNET_ADDRESS_IS_GROUP(a)) {
      Mailboxes(internet_address_group_get_members(INTERNET_ADDRESS_GROUP(a)), out);
    } else if (INTERNET_ADDRESS_IS_MAILBOX(a)) {
      out->emplace_back(HeaderSafe(Str(internet_address_get_name(a))),
                        Str(internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(a))));
    }
  }
}

void AppendText(xmlNode* node, std::string* out) {
  for (xmlNode* n = node; n != nullptr; n = n->next) {
    if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
      if (n->content != nullptr) *out += reinterpret_cast<const char*>(n->content);
      continue;
    }
    if (n->type != XML_ELEMENT_NODE) continue;
    std::string name = reinterpret_cast<const char*>(n->name);
    if (name == "script" || name == "style" || name == "head" || name == "title") continue;
    bool block = name == "p" || name == "div" || name == "br" || name == "li" || name == "tr" ||
                 name == "table" || name == "ul" || name == "ol" || name == "blockquote" ||
                 (name.size() == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6');
    if (block) *out += '\n';
    AppendText(n->children, out);
    if (block) *out += '\n';
  }
}

}  // namespace

std::string ImapMailboxName(std::string_view utf8) {
  auto direct = [](char c) { return c >= 0x20 && c < 0x7f; };
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    if (direct(utf8[i])) {
      out += utf8[i] == '&' ? std::string("&-") : std::string(1, utf8[i]);
      ++i;
      continue;
    }
    size_t j = i;
    while (j < utf8.size() && !direct(utf8[j])) ++j;
    glong units = 0;
    gunichar2* u16 =
        g_utf8_to_utf16(utf8.data() + i, static_cast<glong>(j - i), nullptr, &units, nullptr);
    if (u16 == nullptr) return std::string(utf8);  // not UTF-8: sent as it is
    std::string bytes;
    for (glong k = 0; k < units; ++k) {
      bytes += static_cast<char>(u16[k] >> 8);
      bytes += static_cast<char>(u16[k] & 0xff);
    }
    g_free(u16);
    gchar* b64 = g_base64_encode(reinterpret_cast<const guchar*>(bytes.data()), bytes.size());
    std::string encoded(b64);
    g_free(b64);
    while (!encoded.empty() && encoded.back() == '=') encoded.pop_back();
    std::replace(encoded.begin(), encoded.end(), '/', ',');
    out += "&" + encoded + "-";
    i = j;
  }
  return out;
}

std::string HtmlToText(std::string_view html) {
  htmlDocPtr doc = htmlReadMemory(html.data(), static_cast<int>(html.size()), nullptr, "UTF-8",
                                  HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                      HTML_PARSE_NONET | HTML_PARSE_NOBLANKS);
  if (doc == nullptr) return "";
  std::string raw;
  AppendText(xmlDocGetRootElement(doc), &raw);
  xmlFreeDoc(doc);
  // Whitespace collapsed within lines (a no-break space counts), at most one blank line.
  std::string out;
  int newlines = 0;
  bool space = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\xc2' && i + 1 < raw.size() && raw[i + 1] == '\xa0') {
      c = ' ';
      ++i;
    }
    if (c == '\n') {
      ++newlines;
      space = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (!out.empty()) {
      if (newlines > 0) {
        out += newlines > 1 ? "\n\n" : "\n";
      } else if (space) {
        out += ' ';
      }
    }
    newlines = 0;
    space = false;
    out += c;
  }
  return out;
}

Result<ParsedMail> ParseMail(std::string_view raw) {
  EnsureGMime();
  GMimeStream* stream =
      g_mime_stream_mem_new_with_buffer(raw.data(), static_cast<size_t>(raw.size()));
  GMimeParser* parser = g_mime_parser_new_with_stream(stream);
  g_object_unref(stream);
  GMimeMessage* msg = g_mime_parser_construct_message(parser, nullptr);
  g_object_unref(parser);
  if (msg == nullptr) return Status::InvalidArgument("not a mail message");
  GRef<GMimeMessage> owner(msg);
  ParsedMail m;
  m.message_id = HeaderSafe(Str(g_mime_message_get_message_id(msg)));
  auto in_reply_to = ReferenceIds(g_mime_object_get_header(GMIME_OBJECT(msg), "In-Reply-To"));
  if (!in_reply_to.empty()) m.in_reply_to = HeaderSafe(in_reply_to.front());
  for (std::string& r : ReferenceIds(g_mime_object_get_header(GMIME_OBJECT(msg), "References"))) {
    m.references.push_back(HeaderSafe(r));
  }
  m.subject = HeaderSafe(Str(g_mime_message_get_subject(msg)));
  std::vector<std::pair<std::string, std::string>> from;
  Mailboxes(g_mime_message_get_from(msg), &from);
  if (!from.empty()) {
    m.from_name = from.front().first;
    m.from_address = from.front().second;
  }
  Mailboxes(g_mime_message_get_to(msg), &m.to);
  if (GDateTime* date = g_mime_message_get_date(msg)) {
    // Only a date a TimePoint holds (nanoseconds in 64 bits: 1678 to 2262); one outside
    // (a year 3396, found by fuzz_mime) counts as no Date header.
    int64_t seconds = g_date_time_to_unix(date);
    if (seconds > -9'000'000'000LL && seconds < 9'000'000'000LL) {
      m.date = FromUnixMillis(seconds * 1000);
    }
  }
  std::string plain, html;
  GMimePartIter* iter = g_mime_part_iter_new(GMIME_OBJECT(msg));
  // A single-part message: the iterator walks only the children of a multipart.
  GMimeObject* top = g_mime_message_get_mime_part(msg);
  auto visit = [&](GMimeObject* part) {
    if (!GMIME_IS_PART(part)) return;
    const char* filename = g_mime_part_get_filename(GMIME_PART(part));
    if (g_mime_part_is_attachment(GMIME_PART(part)) || filename != nullptr) {
      m.attachments.push_back(filename != nullptr ? HeaderSafe(filename) : "unnamed");
      return;
    }
    if (!GMIME_IS_TEXT_PART(part)) return;
    GMimeContentType* type = g_mime_object_get_content_type(part);
    bool is_plain = g_mime_content_type_is_type(type, "text", "plain");
    bool is_html = g_mime_content_type_is_type(type, "text", "html");
    if ((is_plain && !plain.empty()) || (is_html && !html.empty()) || (!is_plain && !is_html)) {
      return;  // the first of each kind
    }
    char* text = g_mime_text_part_get_text(GMIME_TEXT_PART(part));
    (is_plain ? plain : html) = Str(text);
    g_free(text);
  };
  if (top != nullptr && !GMIME_IS_MULTIPART(top)) {
    visit(top);
  } else {
    while (g_mime_part_iter_is_valid(iter)) {
      visit(g_mime_part_iter_get_current(iter));
      if (!g_mime_part_iter_next(iter)) break;
    }
  }
  g_mime_part_iter_free(iter);
  m.text = !plain.empty() ? plain : HtmlToText(html);
  // Lines end in \n, as everywhere else in Cortex (mail's own are CRLF).
  std::string lf;
  lf.reserve(m.text.size());
  for (size_t i = 0; i < m.text.size(); ++i) {
    if (m.text[i] == '\r' && i + 1 < m.text.size() && m.text[i + 1] == '\n') continue;
    lf += m.text[i];
  }
  m.text = std::move(lf);
  // Text from a broken charset may hold invalid UTF-8: keep only what is valid.
  if (!g_utf8_validate(m.text.data(), static_cast<gssize>(m.text.size()), nullptr)) {
    char* fixed = g_utf8_make_valid(m.text.data(), static_cast<gssize>(m.text.size()));
    m.text = Str(fixed);
    g_free(fixed);
  }
  return m;
}

std::string ComposeMail(const OutboxItem& item, const std::string& from, TimePoint date) {
  EnsureGMime();
  GRef<GMimeMessage> msg(g_mime_message_new(TRUE));
  {
    GRef<InternetAddress> a(internet_address_mailbox_new(nullptr, HeaderSafe(from).c_str()));
    internet_address_list_add(g_mime_message_get_from(msg.p), a.p);
  }
  {
    GRef<InternetAddress> a(
        internet_address_mailbox_new(nullptr, HeaderSafe(item.recipient).c_str()));
    internet_address_list_add(g_mime_message_get_to(msg.p), a.p);
  }
  // A message's subject comes from its action (OutboxItem::Mail); a digest's is its first
  // line.
  std::string subject = HeaderSafe(item.mail.subject);
  if (subject.empty()) subject = HeaderSafe(item.body.substr(0, item.body.find_first_of("\r\n")));
  g_mime_message_set_subject(msg.p, subject.c_str(), "utf-8");
  int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(date.time_since_epoch()).count();
  GDateTime* dt = g_date_time_new_from_unix_utc(ms / 1000);
  g_mime_message_set_date(msg.p, dt);
  g_date_time_unref(dt);
  g_mime_message_set_message_id(msg.p, ActionMessageId(item.id).c_str());
  // MessageIdOf() admits only printable ASCII without spaces or brackets.
  std::string in_reply_to = MessageIdOf(item.mail.in_reply_to);
  if (!in_reply_to.empty()) {
    g_mime_object_set_header(GMIME_OBJECT(msg.p), "In-Reply-To", ('<' + in_reply_to + '>').c_str(),
                             nullptr);
  }
  std::string refs;
  for (size_t pos = 0; pos < item.mail.references.size();) {
    size_t end = item.mail.references.find(' ', pos);
    if (end == std::string::npos) end = item.mail.references.size();
    std::string id = MessageIdOf(item.mail.references.substr(pos, end - pos));
    if (!id.empty()) refs += (refs.empty() ? "" : " ") + id;
    pos = end + 1;
  }
  if (!refs.empty()) {
    g_mime_object_set_header(GMIME_OBJECT(msg.p), "References", Bracketed(refs).c_str(), nullptr);
  }
  GRef<GMimeTextPart> part(g_mime_text_part_new_with_subtype("plain"));
  std::string body = item.body;
  body.erase(std::remove(body.begin(), body.end(), '\0'), body.end());
  g_mime_text_part_set_text(part.p, body.c_str());
  g_mime_part_set_content_encoding(
      GMIME_PART(part.p),
      g_mime_part_get_best_content_encoding(GMIME_PART(part.p), GMIME_ENCODING_CONSTRAINT_7BIT));
  g_mime_message_set_mime_part(msg.p, GMIME_OBJECT(part.p));

  GMimeFormatOptions* options = g_mime_format_options_clone(nullptr);
  g_mime_format_options_set_newline_format(options, GMIME_NEWLINE_FORMAT_DOS);
  char* text = g_mime_object_to_string(GMIME_OBJECT(msg.p), options);
  g_mime_format_options_free(options);
  std::string out = text != nullptr ? text : "";
  g_free(text);
  return out;
}

}  // namespace cortex
