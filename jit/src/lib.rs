//! Kernel code generation: kir → Cranelift machine code for the host, kir → OpenCL C.
