"""The sandbox that runs generated code under time, memory and process limits, and judges it from outside."""
