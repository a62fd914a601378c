//! PLACEHOLDER by the world developer so the skeleton compiles; the host developer owns and
//! replaces this file (module list of simulate/tcp/*.py ports).
pub mod host;
