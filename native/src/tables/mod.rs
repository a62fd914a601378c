//! The packet table's columns in Arrow layout, as Python receives them.

pub mod columns;
