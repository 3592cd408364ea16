//! diesel-async's bb8 pool as the async retry helper's connection source (feature
//! `bb8`): a checkout per attempt under a forced conflict, and a connection whose
//! attempt was cancelled or whose session was lost closed by the pool instead of
//! handed out again.

on_every_backend!(asynchronous_counters, asynchronous);
