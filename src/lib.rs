//! relay-vm
