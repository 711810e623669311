// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the target attribute (#fusion.target) and of the
// `fusion.target` module attribute: one case per diagnostic.

// The chip must be one the compiler knows; the message lists them.
// expected-error @below {{unknown target chip 'sm_80', expected one of: sm_90a, sm_100a}}
module attributes {fusion.target = #fusion.target<"sm_80">} {}

// -----

// The chip is a quoted string: one error naming the form, the known chips
// and what was written instead.
// expected-error @below {{expected the chip as a quoted string such as #fusion.target<"sm_90a"> (known: sm_90a, sm_100a), but got sm_90a}}
module attributes {fusion.target = #fusion.target<sm_90a>} {}

// -----

// A chip that is not a word at all (a number) gets the same error, without
// the echo.
// expected-error @below {{expected the chip as a quoted string such as #fusion.target<"sm_90a"> (known: sm_90a, sm_100a)}}
module attributes {fusion.target = #fusion.target<90>} {}

// -----

// The target attribute has no other name in the fusion dialect.
// expected-error @below {{unknown attribute `tgt` in dialect `fusion`}}
module attributes {fusion.target = #fusion.tgt<"sm_90a">} {}

// -----

// fusion.target must hold a #fusion.target, not a plain string.
// expected-error @below {{expected 'fusion.target' to be a #fusion.target attribute, but got "sm_90a"}}
module attributes {fusion.target = "sm_90a"} {}

// -----

// fusion.target may only sit on a builtin.module.
module {
  // expected-error @below {{expected 'fusion.target' on a builtin.module, but it is on 'func.func'}}
  func.func @kernel() attributes {fusion.target = #fusion.target<"sm_90a">} {
    return
  }
}

// -----

// fusion.target is the only attribute the fusion dialect defines on ops.
// expected-error @below {{unknown fusion dialect attribute 'fusion.chip'}}
module attributes {fusion.chip = #fusion.target<"sm_90a">} {}
