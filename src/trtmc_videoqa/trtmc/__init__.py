"""trtmc"""
