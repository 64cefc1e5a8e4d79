//! Kernels in a Rust staticlib built with std (`rustc --crate-type=staticlib -O`), for
//! tests/c/test_capi_rust.c: a bounds-checked gather whose out-of-range indices panic and are
//! caught (std's panic machinery, its thread-local panic count and unwinding, on every core)
//! and a bounds-checked prefix loop. The test compares them with the same source built as a
//! cdylib and loaded with dlopen.
use std::panic;
use std::sync::Once;

static QUIET: Once = Once::new();

/// out[i] = values[index[i]] * scale + 1, or -1 where index[i] is out of range (a caught panic).
#[no_mangle]
pub extern "C" fn sk_rust_gather(values: *const f32, n: u32, index: *const u32, m: u32, scale: f32, out: *mut f32) {
    // Caught panics are expected here: no message for them.
    QUIET.call_once(|| panic::set_hook(Box::new(|_| {})));
    let values = unsafe { std::slice::from_raw_parts(values, n as usize) };
    let index = unsafe { std::slice::from_raw_parts(index, m as usize) };
    let out = unsafe { std::slice::from_raw_parts_mut(out, m as usize) };
    for (o, &j) in out.iter_mut().zip(index) {
        *o = panic::catch_unwind(|| values[j as usize] * scale + 1.0).unwrap_or(-1.0);
    }
}

/// out[i] = values[0]^2 + ... + values[i]^2, through checked indexing.
#[no_mangle]
pub extern "C" fn sk_rust_prefix(values: *const f32, n: u32, out: *mut f32) {
    let values = unsafe { std::slice::from_raw_parts(values, n as usize) };
    let out = unsafe { std::slice::from_raw_parts_mut(out, n as usize) };
    let mut sum = 0.0f32;
    for i in 0..values.len() {
        sum += values[i] * values[i];
        out[i] = sum;
    }
}
