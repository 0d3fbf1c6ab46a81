"""Development-time miners of the error-message catalogue (fixtures/messages); CI only reads it."""
