//! The combiners when a group's connection is lost on a server: between the group's
//! changes and its save, or (through a `Relay`) after the server ran the group's COMMIT
//! and before its answer arrived. Nothing that may be in the row is ever run again:
//! every caller of the group is told the outcome is unknown, and the row holds exactly
//! what the server committed. The faults are placed by the relay and by the group's own
//! changes, never by timing.

on_every_server!(scenarios);
