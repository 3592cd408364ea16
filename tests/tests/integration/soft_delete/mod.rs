//! Checked soft delete: marking a row deleted is a checked write that advances the
//! token, so writers still holding the live row can neither edit it nor delete it again.

on_every_backend!(entities, scenarios);
