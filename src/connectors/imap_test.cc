#include "connectors/imap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "core/time.h"

namespace cortex {
namespace {

std::string Formatted(std::string_view text) {
  auto t = ParseInternalDate(text);
  return t ? FormatTime(*t) : "none";
}

TEST(ParseInternalDate, ReadsAnImapDateTimeInUtc) {
  EXPECT_EQ(Formatted("03-Dec-2026 17:58:15 +0000"), "2026-12-03T17:58:15Z");
  EXPECT_EQ(Formatted("03-dec-2026 17:58:15 +0130"), "2026-12-03T16:28:15Z");
  EXPECT_EQ(Formatted(" 3-Jan-2027 00:10:00 -0800"), "2027-01-03T08:10:00Z");
  EXPECT_EQ(Formatted("3-Jan-2027 00:10:00 -0800"), "2027-01-03T08:10:00Z");
}

TEST(ParseInternalDate, RefusesWhatIsNotOne) {
  EXPECT_EQ(Formatted(""), "none");
  EXPECT_EQ(Formatted("Thu, 03 Dec 2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("31-Feb-2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Foo-2026 10:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Dec-2026 24:00:00 +0000"), "none");
  EXPECT_EQ(Formatted("03-Dec-3396 10:00:00 +0000"), "none");  // beyond a TimePoint
  EXPECT_EQ(Formatted("03-Dec-2026 10:00:00"), "none");
}

TEST(UidSet, WritesRanges) {
  EXPECT_EQ(UidSet({1, 2, 3, 5, 7, 8}), "1:3,5,7:8");
  EXPECT_EQ(UidSet({}), "");
}

// A scripted IMAP server on 127.0.0.1 (plain text) for one connection: enough of a login for
// libcurl, CAPABILITY (with or without IDLE), EXAMINE, and IDLE, after whose "+" it sends
// `after_idle`. The IDLE exchange against a real server is tests/e2e/test_imap.py's.
class FakeImap {
 public:
  FakeImap(bool offers_idle, std::string after_idle)
      : offers_idle_(offers_idle), after_idle_(std::move(after_idle)) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&a), len), 0);
    EXPECT_EQ(listen(listener_, 1), 0);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeImap() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }
  ImapAccount Account() const {
    ImapAccount a;
    a.workspace = "w";
    a.url = "imap://127.0.0.1:" + std::to_string(port_);
    a.username = "me";
    a.password = "pw";
    a.tls = "none";
    a.timeout_seconds = 5;
    return a;
  }

 private:
  void Serve() {
    int c = accept(listener_, nullptr, nullptr);
    if (c < 0) return;
    auto say = [c](const std::string& s) { (void)!write(c, s.data(), s.size()); };
    say("* OK fake ready\r\n");
    bool logged_in = false;
    std::string buffer, idle_tag;
    char chunk[4096];
    while (true) {
      size_t eol = buffer.find("\r\n");
      if (eol == std::string::npos) {
        ssize_t n = read(c, chunk, sizeof chunk);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<size_t>(n));
        continue;
      }
      std::string line = buffer.substr(0, eol);
      buffer.erase(0, eol + 2);
      if (line == "DONE") {
        say(idle_tag + " OK idle done\r\n");
        continue;
      }
      std::string tag = line.substr(0, line.find(' '));
      std::string command = line.substr(tag.size() + 1);
      if (command.rfind("CAPABILITY", 0) == 0) {
        say(std::string("* CAPABILITY IMAP4rev1") + (logged_in && offers_idle_ ? " IDLE" : "") +
            "\r\n" + tag + " OK done\r\n");
      } else if (command.rfind("LOGIN", 0) == 0 || command.rfind("AUTHENTICATE", 0) == 0) {
        logged_in = true;
        say(tag + " OK logged in\r\n");
      } else if (command.rfind("EXAMINE", 0) == 0) {
        say("* 1 EXISTS\r\n" + tag + " OK [READ-ONLY] done\r\n");
      } else if (command == "IDLE") {
        idle_tag = tag;
        say("+ idling\r\n" + after_idle_);
      } else if (command == "LOGOUT") {
        say("* BYE\r\n" + tag + " OK bye\r\n");
        break;
      } else {
        say(tag + " BAD unknown\r\n");
      }
    }
    close(c);
  }

  bool offers_idle_;
  std::string after_idle_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

auto Soon(int ms) { return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms); }

TEST(ImapIdle, NewMailWakesTheWaiter) {
  FakeImap server(true, "* OK still here\r\n* 1 FETCH (FLAGS (\\Seen))\r\n* 2 EXISTS\r\n");
  ImapAccount account = server.Account();
  std::atomic<bool> stop{false};
  ImapIdle idle(account);
  auto started = idle.Start("INBOX");
  ASSERT_TRUE(started.ok()) << started.status().message();
  EXPECT_TRUE(*started);
  auto news = idle.Wait(Soon(5000), stop);
  ASSERT_TRUE(news.ok()) << news.status().message();
  EXPECT_TRUE(*news);
  // EXAMINE's "* 1 EXISTS" was no news, and nothing else came.
  news = idle.Wait(Soon(300), stop);
  ASSERT_TRUE(news.ok());
  EXPECT_FALSE(*news);
}

TEST(ImapIdle, ALiteralIsNotReadAsLines) {
  // Inside the literal, a line that looks like news.
  std::string literal = "X: y\r\n* 9 EXISTS\r\n";
  FakeImap server(true, "* 1 FETCH (BODY[HEADER] {" + std::to_string(literal.size()) + "}\r\n" +
                            literal + ")\r\n");
  ImapAccount account = server.Account();
  std::atomic<bool> stop{false};
  ImapIdle idle(account);
  auto started = idle.Start("INBOX");
  ASSERT_TRUE(started.ok()) << started.status().message();
  auto news = idle.Wait(Soon(500), stop);
  ASSERT_TRUE(news.ok()) << news.status().message();
  EXPECT_FALSE(*news);
}

TEST(ImapIdle, ByeIsALostConnection) {
  FakeImap server(true, "* BYE shutting down\r\n");
  ImapAccount account = server.Account();
  std::atomic<bool> stop{false};
  ImapIdle idle(account);
  auto started = idle.Start("INBOX");
  ASSERT_TRUE(started.ok()) << started.status().message();
  auto news = idle.Wait(Soon(5000), stop);
  ASSERT_FALSE(news.ok());
  EXPECT_EQ(news.status().code(), Code::kUnavailable);
  EXPECT_NE(news.status().message().find("IDLE connection lost: * BYE shutting down"),
            std::string::npos)
      << news.status().message();
}

TEST(ImapIdle, AServerWithoutIdleSaysSo) {
  FakeImap server(false, "");
  ImapAccount account = server.Account();
  ImapIdle idle(account);
  auto started = idle.Start("INBOX");
  ASSERT_TRUE(started.ok()) << started.status().message();
  EXPECT_FALSE(*started);
}

TEST(ImapIdle, StopEndsTheWait) {
  FakeImap server(true, "");
  ImapAccount account = server.Account();
  std::atomic<bool> stop{true};
  ImapIdle idle(account);
  ASSERT_TRUE(idle.Start("INBOX").ok());
  auto begun = std::chrono::steady_clock::now();
  auto news = idle.Wait(Soon(60'000), stop);
  ASSERT_TRUE(news.ok());
  EXPECT_FALSE(*news);
  EXPECT_LT(std::chrono::steady_clock::now() - begun, std::chrono::seconds(2));
}

}  // namespace
}  // namespace cortex
