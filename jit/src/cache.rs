//! Compiled kernels cached by kernel structure and target.

use parking_lot::{Mutex, MutexGuard};
use relay_kir::{Kernel, StructuralKey};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// What code was compiled for: a backend and the exact machine it targets (for Cranelift,
/// the triple and ISA flags, so kernels compiled with AVX are not reused without it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target(String);

impl Target {
    /// A target with this description.
    pub fn new(description: impl Into<String>) -> Target {
        Target(description.into())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A thread-safe cache of compiled kernels (`T`: e.g. [`crate::CompiledKernel`]) keyed by
/// ([`Kernel::structural_key`], [`Target`]): structurally equal kernels (same code up to
/// names) share one compilation. Keys compare exactly, so there are no hash collisions.
pub struct KernelCache<T> {
    map: Mutex<HashMap<(StructuralKey, Target), Arc<T>>>,
}

impl<T> Default for KernelCache<T> {
    fn default() -> Self {
        KernelCache { map: Mutex::new(HashMap::new()) }
    }
}

impl<T> fmt::Debug for KernelCache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelCache").field("len", &self.len()).finish()
    }
}

impl<T> KernelCache<T> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached compilation of `kernel` for `target`, or the result of `compile` (stored
    /// on success). The lock is not held while compiling, so two threads may compile the
    /// same kernel at once; the first result stored wins and both get it.
    pub fn get_or_compile<E>(
        &self,
        kernel: &Kernel,
        target: &Target,
        compile: impl FnOnce(&Kernel) -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let key = (kernel.structural_key(), target.clone());
        if let Some(hit) = self.lock().get(&key) {
            return Ok(hit.clone());
        }
        let compiled = Arc::new(compile(kernel)?);
        Ok(self.lock().entry(key).or_insert(compiled).clone())
    }

    /// Number of cached kernels.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached kernel (callers holding an `Arc` keep theirs).
    pub fn clear(&self) {
        self.lock().clear();
    }

    // A panic while the lock was held cannot leave the map inconsistent (every update is a
    // single insert), so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<(StructuralKey, Target), Arc<T>>> {
        self.map.lock()
    }
}
