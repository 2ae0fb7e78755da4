"""The generic profiles' schemes (issue 11): research-agent and tool-use, one module each with its
checks and offline signals, scored through ``scheme.ProfileScheme``; ``common`` holds what they share."""
