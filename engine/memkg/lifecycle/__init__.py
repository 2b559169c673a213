"""What agents do with memory over time: expire, forget, erase (and later inject, distill...)."""
