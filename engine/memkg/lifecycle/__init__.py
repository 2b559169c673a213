"""What agents do with memory over time: inject, distill, extract, prune, consolidate, recall,
expire, forget and erase. Steps use the engine through ``ports.MemoryPort`` and the model
through ``memkg.llm.LLM``; ``Engine`` wires them."""
