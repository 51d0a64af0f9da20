#include "core/suspend.h"

namespace cortex {
namespace {

thread_local Suspender* current = nullptr;

}  // namespace

Suspender* Suspender::Current() { return current; }

Suspender::Scope::Scope(Suspender* s) : previous_(current) { current = s; }

Suspender::Scope::~Scope() { current = previous_; }

}  // namespace cortex
