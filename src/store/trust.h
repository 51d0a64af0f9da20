// The trust area: autonomy levels and ceilings per action class and scope, and the
// approval streaks that raise them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/model.h"
#include "store/tx.h"

namespace cortex {

class TrustReader {
 public:
  explicit TrustReader(TxState& s) : s_(s) {}
  // By action class, then scope.
  Result<std::vector<TrustSetting>> List(const std::string& ws);
  // An empty streak if there is none.
  Result<TrustStreak> GetStreak(const std::string& ws, const std::string& action_class,
                                const std::string& entity_id);

 protected:
  TxState& s_;
};

class TrustWriter : public TrustReader {
 public:
  using TrustReader::TrustReader;
  Status Set(const std::string& ws, const TrustSetting& t);
  Status SetStreak(const std::string& ws, const std::string& action_class,
                   const std::string& entity_id, const TrustStreak& s);
};

inline TrustReader ReadTx::trust() const { return TrustReader(s_); }
inline TrustWriter WriteTx::trust() const { return TrustWriter(s_); }

}  // namespace cortex
