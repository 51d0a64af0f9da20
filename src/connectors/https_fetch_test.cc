#include "connectors/https_fetch.h"

#include <gtest/gtest.h>

namespace cortex {
namespace {

TEST(HttpsFetchTest, PublicAddresses) {
  for (const char* ip : {"93.184.216.34", "1.1.1.1", "172.32.0.1", "100.128.0.1",
                         "2606:4700:4700::1111", "::ffff:8.8.8.8", "2002:0808:0808::1"}) {
    EXPECT_TRUE(IsPublicAddress(ip)) << ip;
  }
  for (const char* ip :
       {"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
        "198.18.0.1", "192.0.2.1", "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1",
        "ff02::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "64:ff9b::a9fe:a9fe",
        "2002:7f00:0001::1", "2001:db8::1", "not an address", ""}) {
    EXPECT_FALSE(IsPublicAddress(ip)) << ip;
  }
}

}  // namespace
}  // namespace cortex
