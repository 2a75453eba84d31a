"""Everything that draws: the shared renderer, offscreen (EGL) rendering and the Qt viewer.

The only package of flock3d that imports vispy or Qt; importing it alone loads neither.
"""
