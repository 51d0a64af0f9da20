#include "connectors/mime.h"

#include <gtest/gtest.h>

#include "core/text.h"
#include "core/time.h"
#include "engines/delivery/outgoing_mail.h"
#include "engines/sync/mail_sync.h"

namespace cortex {
namespace {

// The header block of `mail` (up to the blank line), with folded lines joined.
std::string Headers(const std::string& mail) {
  std::string head = mail.substr(0, mail.find("\r\n\r\n") + 2);
  std::string out;
  for (size_t i = 0; i < head.size(); ++i) {
    if (head.compare(i, 3, "\r\n ") == 0 || head.compare(i, 3, "\r\n\t") == 0) {
      i += 1;
      continue;
    }
    out += head[i];
  }
  return out;
}

OutboxItem Message(std::string body, std::string subject) {
  OutboxItem item;
  item.id = "act_01M8PS06M053VVFGPPNAWWM0AA";
  item.recipient = "marcus@h.example";
  item.body = std::move(body);
  item.mail.subject = std::move(subject);
  return item;
}

TEST(HeaderSafe, ControlCharactersNeverSurvive) {
  EXPECT_EQ(HeaderSafe("Hello\rBcc: evil@x\r\n\tX: 1\0y"), "Hello Bcc: evil@x X: 1");
  EXPECT_EQ(HeaderSafe(std::string("a\0b", 3)), "a b");
  EXPECT_EQ(HeaderSafe("  spaced   out  "), "spaced out");
}

TEST(ReplySubject, AddsReOnce) {
  EXPECT_EQ(ReplySubject("Pilot"), "Re: Pilot");
  EXPECT_EQ(ReplySubject("RE: Pilot"), "RE: Pilot");
  EXPECT_EQ(ReplySubject("re:Pilot\r\nBcc: x"), "re:Pilot Bcc: x");
}

TEST(MessageIdOf, OnlyWellFormedIds) {
  EXPECT_EQ(MessageIdOf("<a.b@c.example>"), "a.b@c.example");
  EXPECT_EQ(MessageIdOf("a@b"), "a@b");
  EXPECT_EQ(MessageIdOf("mail-8812"), "");
  EXPECT_EQ(MessageIdOf("a@b>\r\nBcc: x@y"), "");
  EXPECT_EQ(MessageIdOf("a b@c"), "");
  EXPECT_EQ(MessageIdOf("@c"), "");
}

TEST(ComposeMail, WritesTheHeadersAMailReaderNeeds) {
  OutboxItem item = Message("Friday works.\nThanks!", "Re: Pilot");
  item.mail.in_reply_to = "m2@h.example";
  item.mail.references = "root@h.example m2@h.example";
  std::string mail = ComposeMail(item, "me@cortex.example", FromUnixMillis(1796300000000));
  std::string h = Headers(mail);
  EXPECT_NE(h.find("From: me@cortex.example\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("To: marcus@h.example\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("Subject: Re: Pilot\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("Message-Id: <act_01M8PS06M053VVFGPPNAWWM0AA@cortex>\r\n"), std::string::npos)
      << h;
  EXPECT_NE(h.find("In-Reply-To: <m2@h.example>\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("References: <root@h.example> <m2@h.example>\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("Date: "), std::string::npos) << h;
  EXPECT_NE(mail.find("\r\n\r\nFriday works.\r\nThanks!"), std::string::npos) << mail;
}

TEST(ComposeMail, NoLineBreakReachesAHeader) {
  OutboxItem item = Message("body", "Hi\r\nBcc: evil@x.example\rX-Evil: 1");
  item.recipient = "marcus@h.example\r\nBcc: evil@x.example";
  item.mail.in_reply_to = "a@b>\r\nX-Evil: 2";
  item.mail.references = "c@d\r\nX-Evil: 3";
  std::string h = Headers(ComposeMail(item, "me@x.example\r\nX-Evil: 4", FromUnixMillis(0)));
  for (const char* bad : {"\r\nBcc:", "\r\nX-Evil:", "\nBcc", "\rX-Evil"}) {
    EXPECT_EQ(h.find(bad), std::string::npos) << bad << " in " << h;
  }
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i] == '\r') {
      EXPECT_EQ(h[i + 1], '\n') << h;
    } else if (h[i] == '\n') {
      EXPECT_EQ(h[i - 1], '\r') << h;
    }
  }
}

TEST(ComposeMail, NonAsciiIsEncodedNotRaw) {
  OutboxItem item = Message("Grüße, ✓", "Budget für Q3 ✓");
  std::string mail = ComposeMail(item, "me@x.example", FromUnixMillis(0));
  std::string h = Headers(mail);
  EXPECT_NE(h.find("Subject: Budget =?UTF-8?"), std::string::npos) << h;  // RFC 2047 words
  for (unsigned char c : mail) EXPECT_LT(c, 0x80) << mail;                // 7-bit clean on the wire
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

TEST(ParseMail, ReadsHeadersAndPrefersPlainText) {
  auto m = ParseMail(
      "From: =?UTF-8?Q?J=C3=BCrgen?= <J@Firma.example>\r\n"
      "To: Me <me@x.example>, other@y.example\r\n"
      "Subject: =?UTF-8?B?R3LDvMOfZQ==?= again\r\n"
      "Message-ID: <id-2@firma.example>\r\n"
      "In-Reply-To: <id-1@firma.example>\r\n"
      "References: <root@firma.example> <id-1@firma.example>\r\n"
      "Date: Thu, 03 Dec 2026 10:00:00 +0100\r\n"
      "MIME-Version: 1.0\r\n"
      "Content-Type: multipart/alternative; boundary=b\r\n\r\n"
      "--b\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n"
      "--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nplain text\r\n--b--\r\n");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->from_name, "Jürgen");
  EXPECT_EQ(m->from_address, "J@Firma.example");
  ASSERT_EQ(m->to.size(), 2u);
  EXPECT_EQ(m->to[1].second, "other@y.example");
  EXPECT_EQ(m->subject, "Grüße again");
  EXPECT_EQ(m->message_id, "id-2@firma.example");
  EXPECT_EQ(m->in_reply_to, "id-1@firma.example");
  EXPECT_EQ(m->references, (std::vector<std::string>{"root@firma.example", "id-1@firma.example"}));
  ASSERT_TRUE(m->date.has_value());
  EXPECT_EQ(FormatTime(*m->date), "2026-12-03T09:00:00Z");
  EXPECT_EQ(m->text.substr(0, 10), "plain text");
}

TEST(HtmlToText, KeepsTheWordsDropsTheMarkup) {
  EXPECT_EQ(HtmlToText("<html><head><style>p{}</style><script>x()</script></head><body>"
                       "<h1>Title</h1><p>One&nbsp;two &amp; <b>three</b>.</p><p>Four</p>"
                       "</body></html>"),
            "Title\n\nOne two & three.\n\nFour");
}

TEST(MailItems, AReceivedMessageIsANewSenderAndAnEpisode) {
  auto items = MailItems(
      "From: Marcus Webb <Marcus@H.example>\r\nTo: me@x.example\r\nSubject: Cutover\r\n"
      "Message-ID: <m1@h.example>\r\nDate: Thu, 03 Dec 2026 10:00:00 +0000\r\n\r\n"
      "Can you confirm by Tuesday? Thanks.\r\n",
      "message_received", std::nullopt, FromUnixMillis(0),
      [](const std::string&) { return false; });
  ASSERT_EQ(items.size(), 2u);
  const auto& entity = std::get<IncomingEntity>(items[0]);
  const auto& ep = std::get<IncomingEpisode>(items[1]);
  EXPECT_EQ(entity.name, "Marcus Webb");
  EXPECT_EQ(entity.identifiers, std::vector<std::string>{"marcus@h.example"});
  EXPECT_EQ(ep.counterparty, "marcus@h.example");
  EXPECT_EQ(ep.episode.kind, "message_received");
  EXPECT_EQ(ep.episode.summary, "Marcus Webb: 'Can you confirm by Tuesday?'");
  EXPECT_EQ(ep.episode.external_id, "m1@h.example");
  EXPECT_EQ(ep.episode.thread, "m1@h.example");
  EXPECT_EQ(FormatTime(ep.episode.occurred_at), "2026-12-03T10:00:00Z");
  // A sender already known keeps the name Cortex has: only the episode.
  EXPECT_EQ(MailItems("From: Marcus Webb <marcus@h.example>\r\nSubject: x\r\n\r\nhi\r\n",
                      "message_received", std::nullopt, FromUnixMillis(0),
                      [](const std::string&) { return true; })
                .size(),
            1u);
  // No usable sender: nothing to store.
  EXPECT_TRUE(MailItems("Subject: x\r\n\r\nbody\r\n", "message_received", std::nullopt,
                        FromUnixMillis(0), [](const std::string&) { return false; })
                  .empty());
}

TEST(MailItems, TheServersDateComesFirstThenTheHeaderThenNow) {
  auto occurred = [](const std::string& raw, std::optional<TimePoint> internal) {
    auto items = MailItems(raw, "message_received", internal, FromUnixMillis(1'000'000'000'000),
                           [](const std::string&) { return true; });
    return FormatTime(std::get<IncomingEpisode>(items.at(0)).episode.occurred_at);
  };
  std::string dated =
      "From: a@h.example\r\nSubject: x\r\nDate: Thu, 03 Dec 2026 10:00:00 +0000\r\n\r\nhi\r\n";
  std::string undated = "From: a@h.example\r\nSubject: x\r\n\r\nhi\r\n";
  TimePoint internal = *ParseTime("2026-12-04T08:30:00Z");
  EXPECT_EQ(occurred(dated, internal), "2026-12-04T08:30:00Z");
  EXPECT_EQ(occurred(dated, std::nullopt), "2026-12-03T10:00:00Z");
  EXPECT_EQ(occurred(undated, std::nullopt), "2001-09-09T01:46:40Z");
  // A time ingest refuses (after 2200) is passed over (found by fuzz_mime).
  std::string far =
      "From: a@h.example\r\nSubject: x\r\nDate: Thu, 03 Dec 2226 07:00:00 +0000"
      "\r\n\r\nhi\r\n";
  EXPECT_EQ(occurred(far, std::nullopt), "2001-09-09T01:46:40Z");
  TimePoint year_2226 = *ParseTime("2026-12-04T08:30:00Z") + std::chrono::hours(24 * 365 * 200);
  EXPECT_EQ(occurred(dated, year_2226), "2026-12-03T10:00:00Z");
}

TEST(ImapMailboxName, ModifiedUtf7AsRfc3501WritesIt) {
  EXPECT_EQ(ImapMailboxName("INBOX"), "INBOX");
  EXPECT_EQ(ImapMailboxName("Entwürfe"), "Entw&APw-rfe");
  EXPECT_EQ(ImapMailboxName("Peter & Paul"), "Peter &- Paul");
  // RFC 3501's own example: "~peter/mail/台北/日本語".
  EXPECT_EQ(ImapMailboxName("~peter/mail/台北/日本語"), "~peter/mail/&U,BTFw-/&ZeVnLIqe-");
  // Outside the BMP: a surrogate pair.
  EXPECT_EQ(ImapMailboxName("a😀b"), "a&2D3eAA-b");
}

}  // namespace
}  // namespace cortex
