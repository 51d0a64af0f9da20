#include "core/suspend.h"

namespace cortex {
namespace {

thread_local Suspender* current = nullptr;
thread_local bool must_not_block = false;

}  // namespace

Suspender* Suspender::Current() { return current; }

bool Suspender::MustNotBlock() { return must_not_block; }

void Suspender::SetMustNotBlock(bool v) { must_not_block = v; }

Suspender::Scope::Scope(Suspender* s) : previous_(current) { current = s; }

Suspender::Scope::~Scope() { current = previous_; }

}  // namespace cortex
