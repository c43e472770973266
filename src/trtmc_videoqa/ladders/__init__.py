"""ladders"""
