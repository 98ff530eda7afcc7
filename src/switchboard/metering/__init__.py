"""metering domain."""
