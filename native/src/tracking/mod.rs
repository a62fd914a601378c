//! Connections across packets: `flows` numbers them and keeps each direction's ISN and window
//! scale (the packet table's relative numbers), `conntable` summarises each connection, and
//! `accounting` counts every record by what became of it.

pub mod accounting;
pub mod conntable;
pub mod flows;
